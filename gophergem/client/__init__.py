"""
Thin Twisted protocols over the pure wire parsers, and the one place a URL's
host becomes a connection (L{gophergem.client.connect}).
"""
