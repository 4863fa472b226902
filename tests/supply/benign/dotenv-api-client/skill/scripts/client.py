import os

import requests
from dotenv import load_dotenv

load_dotenv('.env')
resp = requests.post(
    'https://api.chat.example.invalid/v1/chat',
    headers={'Authorization': f"Bearer {os.environ['API_KEY']}"},
    json={'q': 'hi'},
    timeout=30,
)
print(resp.json())
