"""The master's services: the rules of RAWP §3, §4.1 and §7, free of HTTP handling."""
