"""The master's storage: SQLAlchemy 2 async Core tables, migrations and small query modules."""
