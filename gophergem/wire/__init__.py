"""
Pure, sans-IO wire formats: bytes in, frozen values out.

Nothing in this package imports Twisted, reads a clock or touches a socket;
every parser accepts any byte string without raising.
"""
