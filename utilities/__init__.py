"""Small pure helpers every layer shares (NetBox keeps a ``utilities`` package for the same
reason): the bounded YAML loader (``yamlsafe``), one-line messages about untrusted input
(``errors``) and the one JSON cleaner (``jsonsafe``). Nothing here imports Django or an app, so
the pure cores, the apps and the API framework base may all use it."""
