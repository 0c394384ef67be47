"""Pure rules of outbound webhooks: which events, what a payload holds, signatures, addresses, backoff.

No SQL, no AWS, no sockets: the webhook_delivery function (outside the VPC) imports these too.
"""
