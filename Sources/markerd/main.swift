print("markerd: not yet implemented")
