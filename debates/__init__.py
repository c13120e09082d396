"""The debates app: one package per study design, sharing models/, llm.py and imports.py."""
