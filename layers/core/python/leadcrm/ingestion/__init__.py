"""Entry points from outside: Meta and WhatsApp connections and leads, and CSV imports."""
