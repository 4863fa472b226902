"""The scanner a skill from elsewhere passes before it is installed: static rules over its text and scripts
(with what each script means), the sandboxed run, and Cisco's AI skill scanner as a second opinion, calibrated.
"""
