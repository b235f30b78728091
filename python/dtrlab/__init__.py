"""dtrlab: a bit-exact, fast DTR simulator and the reproducible study around it."""
