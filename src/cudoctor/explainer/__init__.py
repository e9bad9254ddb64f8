"""cudoctor explain."""
