import json
import os
import sys

import requests


def main(path: str) -> None:
    report = json.load(open(path))
    base = os.environ["DASHBOARD_URL"].rstrip("/")
    token = os.environ["DASHBOARD_TOKEN"]
    r = requests.post(f"{base}/api/reports", json=report, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    r.raise_for_status()
    print("published", r.json().get("id"))


if __name__ == "__main__":
    main(sys.argv[1])
