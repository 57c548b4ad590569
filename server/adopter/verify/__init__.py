"""`adopter verify`: run each fix that `fix` would write against the original class, and measure its gain.

The parent side (`cases`, `runner`, `report`) is pure: it plans the fixes with the session and starts the
worker (`adopter.verify.worker`, which imports torch and the user's file) in a subprocess with a timeout.
Nothing is ever written to the user's files.
"""
