"""What the tests share: the cast, study builders, real servers and clients."""
