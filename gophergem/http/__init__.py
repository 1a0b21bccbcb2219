"""
Everything C{twisted.web}: the bearer guard and the RFC 9728 metadata
(L{gophergem.http.guard}).
"""
