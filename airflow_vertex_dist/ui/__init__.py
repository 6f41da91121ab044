"""The job view inside the Airflow UI (docs/ui.md): an Airflow plugin (``plugin.py``) with a FastAPI
app (``app.py``) that shows a task's Vertex AI job, drawn by ``page.py`` from ``model.py``'s reading of
the job (pools, timeline, replicas, trials and charts). Nothing here is imported by the operators."""
