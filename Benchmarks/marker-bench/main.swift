print("marker-bench: not yet implemented")
