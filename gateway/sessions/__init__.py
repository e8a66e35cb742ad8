"""Sessions and conversations: chat verbs, threads bound to sessions, live links, prompts."""
