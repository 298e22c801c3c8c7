"""The report's figures, one module each; each draw() writes PNG and SVG next to the JSON (plotting.py
holds their shared style)."""
