"""People, not tokens: users, organisations, memberships, sessions, invitations, API keys.

* ``store``: the rows (organisations, users, memberships, invitations, e-mail domains, keys).
* ``passwords``: Argon2id hashes (pwdlib), the length rule and the common-password list.
* ``signin``: turning a password, an invitation or a verified OpenID Connect identity into a
  session, and the session cookie.
* ``scope``: a transaction acting for one organisation (row-level security, migration 0029).
"""
