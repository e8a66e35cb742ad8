"""The master's HTTP surfaces, one blueprint each; handlers stay thin and call services."""
