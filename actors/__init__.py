"""The actors on a call: the scripted caller and the reference agent. They drive calls through
the transports in capture/ and listen with the endpointer in asr/; neither is a transport."""
