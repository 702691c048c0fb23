"""What every stage shares: cases and chips, the table schema, HBM traffic, file and process utilities."""
