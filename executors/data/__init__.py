"""Demo data shipped with the executors (flights, hotels, weather, venues, catering, rates, passages, checklists)."""
