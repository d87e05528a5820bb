print("markerctl: not yet implemented")
