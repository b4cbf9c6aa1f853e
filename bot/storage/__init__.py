"""Storage backends: where staging and public folders live (local folders, or SFTP)."""
