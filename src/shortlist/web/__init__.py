"""The web UI's templates (Jinja2), static files (a little vanilla JS, one stylesheet) and the job
search page's filters.

No build step and nothing loaded from other origins: templates and static files ship inside the
package and are served by the app itself; the pages' routes are HTTP routes like the API's
(``shortlist.api.routes.pages``). The result stream the recruiter console follows is an API
route: ``shortlist.api.routes.events``.
"""
