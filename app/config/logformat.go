package config

// LogFormats are the values of --log-format: json (slog's JSON keys time, level, msg), text
// (slog's key=value lines), cloud (JSON with Cloud Logging's keys severity and message, which
// CloudWatch and ECS log drivers pass through as JSON too).
var LogFormats = []string{"json", "text", "cloud"}
