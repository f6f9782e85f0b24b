"""Alembic environment: runs migrations on the connection the meta store hands over."""

from alembic import context

from meta.store.schema import metadata

config = context.config
connection = config.attributes.get("connection")


def run() -> None:
    if connection is None:
        url = config.get_main_option("sqlalchemy.url")
        context.configure(url=url, target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run()
