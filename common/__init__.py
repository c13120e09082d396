"""Small pieces every app may use; imports nothing from the apps."""
