#!/usr/bin/env python3
"""A tool server for pactum (MCP over stdio), on the Python standard library only: one tool,
`lookup_order`, that looks an order up by its id in the dict below."""
import json
import sys

ORDERS = {"A-1042": {"status": "shipped", "carrier": "DHL", "eta": "2026-03-02"},
          "A-1043": {"status": "packing", "carrier": None, "eta": "2026-03-05"}}
TOOL = {"name": "lookup_order", "description": "Looks an order up by its id.",
        "inputSchema": {"type": "object", "required": ["order_id"],
                        "properties": {"order_id": {"type": "string"}}}}


def result(msg):
    method, params = msg["method"], msg.get("params", {})
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "orders", "version": "1.0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        order = ORDERS.get(params["arguments"]["order_id"])
        if order is None:
            return {"content": [{"type": "text", "text": "no such order"}], "isError": True}
        return {"content": [{"type": "text", "text": json.dumps(order)}], "structuredContent": order}
    return {}


for line in sys.stdin:
    msg = json.loads(line)
    if "id" in msg:  # a request (notifications need no answer)
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result(msg)}), flush=True)
