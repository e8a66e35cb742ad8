"""The workspace's files as the client touches them: every network path confined first
(paths), directories listed and files read off the event loop (fs), prompt attachments checked
and saved (attachments), and the fuzzy file search with its index (search)."""
