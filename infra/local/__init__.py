"""The local stack: the whole product on one machine (PostgreSQL, moto, HTTP, pollers, scheduler). Never deployed."""
