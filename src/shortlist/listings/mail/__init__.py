"""Job posts by e-mail, as employers really send them.

* ``smtp`` — the SMTP intake (aiosmtpd): a secret address per company, each message committed
  as a row before it is answered;
* ``store`` (+ ``queries.sql``) — intake addresses and inbound messages;
* ``queue`` — the parse queue on the one primitive (``shortlist.queue``);
* ``sandbox`` — parser processes with a hard time limit, off the event loop;
* ``parse`` — free-form understanding (subject, text, HTML, PDF/DOCX; title, city, work mode,
  salary, description);
* ``reply`` — the answer to the sender through ``SHORTLIST_SMTP_RELAY_URL``.
"""
