"""The REST API's routes: a Chalice Blueprint per resource, each route written once with
its path, method, role and declaration (``chalicelib/routes/resource.py``). ``app.py``
registers the blueprints after the authorizer."""
