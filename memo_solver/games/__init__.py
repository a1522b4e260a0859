"""The games, one package per family, and the registry that names them for the
surfaces. A family knows the core and the store protocol, never another family."""
