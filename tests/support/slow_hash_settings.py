"""The production settings with a password hasher slow enough to see who waits for it
(tests/security/test_login_lane.py): a login attempt takes seconds, not a quarter of one."""

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["tests.support.slow_hash_settings.SlowPBKDF2"]

from django.contrib.auth.hashers import PBKDF2PasswordHasher  # noqa: E402


class SlowPBKDF2(PBKDF2PasswordHasher):
    iterations = 20_000_000  # ~20x Django's default
