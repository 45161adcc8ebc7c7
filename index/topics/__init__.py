"""The topic map, computed at build time: layout, clusters at two levels, their names."""
