"""The client's HTTP and WebSocket surfaces, one blueprint each; handlers stay thin."""
