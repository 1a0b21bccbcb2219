"""
Helpers shared by the test modules: test modules import from here, never
from one another (C{tests/test_tests.py} checks it).
"""
