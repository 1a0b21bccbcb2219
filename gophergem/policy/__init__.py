"""
Policy: which targets may be dialled, how often, and what is remembered.

Kept apart from the protocols so that every rule can be read and tested on
its own.
"""
