"""Scenarios: a timeline of capacity, preemption, delay and API-fault settings in one file (``model``),
read with errors naming the line (``loader``) and played on a compressed clock (``player``)."""
