"""
Following capsules: reading what a subscribed page offers (a gemsub gemlog,
an Atom or RSS document, a dated phlog menu, or any page's links), the
subscriptions' state, and their exchange as OPML.
"""
