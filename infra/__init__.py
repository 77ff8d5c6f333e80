"""Deploying cronhook to AWS: the merge template, packaging, deploying, monitoring."""
