"""Scripted calls: scenarios, the scripted caller, speech, the corpus generator."""
