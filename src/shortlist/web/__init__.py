"""The web UI: server-rendered pages (Jinja2) and a little vanilla JS.

No build step and nothing loaded from other origins: templates and static files ship inside the
package and are served by the app itself (``shortlist.web.pages``). The result stream the
recruiter console follows is an API route: ``shortlist.api.routes.events``.
"""
