"""The incident store: SQLite (WAL) behind a small interface. Incidents, timeline, audit."""
