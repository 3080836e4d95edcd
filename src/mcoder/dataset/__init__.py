"""Stage 1: problem sets from public sources (adapters), collect -> process -> filter -> verify."""
