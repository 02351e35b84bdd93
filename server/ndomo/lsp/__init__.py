"""The only package that imports pygls: the editor surface."""
