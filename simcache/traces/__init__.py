"""Files users bring, parsed: the columnar trace store and one reader per file format, returning
plain readings."""
