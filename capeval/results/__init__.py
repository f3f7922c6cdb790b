"""Result files: JSON Lines rows and v3 JSON, read and written without losing data."""
