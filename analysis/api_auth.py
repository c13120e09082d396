"""The API's token authentication, with wrong tokens counted per client address.

A token is 160 random bits, so guessing one is hopeless; still, every guess costs a database
lookup, and a client sending thousands is not an analyst. Past API_TOKEN_FAILURE_LIMITS
(wrong tokens per address, COUNT/SECONDS windows) the address is answered 429 with
Retry-After, and its tokens are not looked up, right or wrong, until the window ends: a right
token must not tell a guesser it was right. Requests with no token, or with a right one under
the limit, are never counted."""

from __future__ import annotations

import logging

from django.conf import settings
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from common import limits

SCOPE = "api-token"
log = logging.getLogger(__name__)


class CountedTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            return None  # no token: the next way in (the admin's session), or a 401
        address = limits.request_address(request._request)
        spec = settings.API_TOKEN_FAILURE_LIMITS
        wait = limits.rate_wait(SCOPE, address, spec)
        if wait:
            raise Throttled(wait, detail="Too many wrong tokens from this address.")
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            limits.rate_hit(SCOPE, address, spec)
            if wait := limits.rate_wait(SCOPE, address, spec):
                # Said once per window: past here the address's tokens are not looked up.
                log.warning("API tokens from %s refused for %d s: too many wrong ones", address, wait)
            raise
