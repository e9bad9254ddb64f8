"""cudoctor fleet: every node of a cluster, on Ray, and the odd ones out."""
