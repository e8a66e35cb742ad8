"""Agent sessions on this machine (RAWP §5): the session table, one session's turns and
frames, its replay buffer and frame chunking, the prompts it accepts and the socket's data
plane."""
