package io.strata.s3

import java.io.{BufferedInputStream, BufferedOutputStream, ByteArrayOutputStream, EOFException, InputStream}
import java.net.{InetAddress, ServerSocket, Socket}
import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue, Executors, ThreadFactory}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * An HTTP/1.1 proxy between S3A and a local S3 server that injects faults into commit PUTs (a PUT of
 * `.../_delta_log/<20 digits>.json`): each queued [[FaultProxy.Fault]] is taken by the next commit PUT. Every other
 * request is forwarded untouched, except that with `ignoreConditionalWrites` every PUT loses its `If-None-Match`
 * header, which makes the server behave like one that ignores conditional writes.
 *
 * Each request is forwarded on a fresh upstream connection (`Connection: close`, `Expect` dropped: the proxy answers
 * `100 Continue` itself) and its response read whole before it is relayed, so the client side can keep its
 * connection alive. Bodies are relayed byte for byte (Content-Length or chunked framing kept as sent).
 */
final class FaultProxy private (upstreamPort: Int, val ignoreConditionalWrites: Boolean) extends AutoCloseable {
  import FaultProxy._

  private val listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress)
  val port: Int = listener.getLocalPort
  val endpoint = s"http://127.0.0.1:$port"

  private val faults = new ConcurrentLinkedQueue[Fault]()
  private val seen = new ConcurrentLinkedQueue[Seen]()
  private val open = ConcurrentHashMap.newKeySet[Socket]()
  private val pool = Executors.newCachedThreadPool(new ThreadFactory {
    def newThread(r: Runnable): Thread = { val t = new Thread(r, s"fault-proxy-$port"); t.setDaemon(true); t }
  })

  /** Queues faults, each for one later commit PUT, in order. */
  def inject(fs: Fault*): Unit = fs.foreach(faults.add)
  /** Faults queued and not yet taken by a commit PUT. */
  def pending: Int = faults.size
  def clearFaults(): Unit = faults.clear()
  /** Every request handled so far, in the order they were answered (or dropped). */
  def requests: Seq[Seen] = seen.asScala.toSeq
  /** The PUTs of one object key (`<table key>/_delta_log/...`), in order. */
  def putsOf(key: String): Seq[Seen] = requests.filter(r => r.method == "PUT" && r.key == key)

  pool.submit(new Runnable {
    def run(): Unit = while (!listener.isClosed) {
      try {
        val client = listener.accept()
        open.add(client)
        pool.submit(new Runnable { def run(): Unit = serve(client) })
      } catch { case NonFatal(_) => } // closed
    }
  })

  private def serve(client: Socket): Unit = try {
    val in = new BufferedInputStream(client.getInputStream)
    val out = new BufferedOutputStream(client.getOutputStream)
    var keepAlive = true
    while (keepAlive) readHead(in) match {
      case None => keepAlive = false
      case Some((requestLine, headers0)) =>
        val Array(method, target, _) = requestLine.split(" ", 3)
        if (header(headers0, "Expect").exists(_.equalsIgnoreCase("100-continue"))) {
          out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(ISO_8859_1)); out.flush()
        }
        val body = readBody(in, headers0, noBody = false, untilEof = false)
        val key = java.net.URLDecoder.decode(target.takeWhile(_ != '?').stripPrefix("/").dropWhile(_ != '/').drop(1), UTF_8)
        val fault = if (method == "PUT" && !target.contains('?') && CommitKey.matches(key)) Option(faults.poll()) else None
        val stripped = method == "PUT" && ignoreConditionalWrites
        val conditional = header(headers0, "If-None-Match").isDefined && !stripped
        var headers = without(headers0, "Expect", "Connection")
        if (stripped) headers = without(headers, "If-None-Match")
        keepAlive = !header(headers0, "Connection").exists(_.equalsIgnoreCase("close"))
        fault match {
          case Some(f @ (Conflict409 | SlowDown503)) =>
            seen.add(Seen(method, key, conditional, Some(f), f.status))
            out.write(errorResponse(f, key)); out.flush()
          case _ =>
            val (status, response) = forward(requestLine, headers :+ ("Connection" -> "close"), body, method == "HEAD")
            seen.add(Seen(method, key, conditional, fault, status))
            if (fault.contains(DropResponse)) keepAlive = false // the request landed; its answer never comes
            else { out.write(response); out.flush() }
        }
    }
  } catch { case NonFatal(_) => } finally { open.remove(client); try client.close() catch { case NonFatal(_) => } }

  /** Sends the request upstream on a new connection; the status and the whole response, framed for keep-alive. */
  private def forward(requestLine: String, headers: Seq[(String, String)], body: Array[Byte],
                      head: Boolean): (Int, Array[Byte]) = {
    val up = new Socket(InetAddress.getLoopbackAddress, upstreamPort)
    try {
      up.setSoTimeout(60000)
      val upOut = new BufferedOutputStream(up.getOutputStream)
      upOut.write(render(requestLine, headers, body)); upOut.flush()
      val upIn = new BufferedInputStream(up.getInputStream)
      val (statusLine, respHeaders) = readHead(upIn).getOrElse(throw new EOFException("no response upstream"))
      val status = statusLine.split(" ")(1).toInt
      val noBody = head || status / 100 == 1 || status == 204 || status == 304
      val respBody = readBody(upIn, respHeaders, noBody, untilEof = true)
      val framed = header(respHeaders, "Content-Length").isDefined || isChunked(respHeaders) || noBody
      val relayed = without(respHeaders, "Connection") ++ (if (framed) Nil else Seq("Content-Length" -> respBody.length.toString))
      (status, render(statusLine, relayed, respBody))
    } finally up.close()
  }

  override def close(): Unit = {
    listener.close()
    open.asScala.foreach(s => try s.close() catch { case NonFatal(_) => })
    pool.shutdownNow()
  }
}

object FaultProxy {
  sealed abstract class Fault(val status: Int)
  /** Forward the PUT and let it land, then close the client's connection without an answer. */
  case object DropResponse extends Fault(200)
  /** Answer 409 ConditionalRequestConflict without forwarding (S3: a conditional write in flight on the key). */
  case object Conflict409 extends Fault(409)
  /** Answer 503 SlowDown without forwarding (S3's throttling answer). */
  case object SlowDown503 extends Fault(503)

  /** One request: its object key, whether it reached the server with `If-None-Match`, the fault, the status. */
  final case class Seen(method: String, key: String, conditional: Boolean, fault: Option[Fault], status: Int)

  private val CommitKey = """.*_delta_log/\d{20}\.json""".r

  def start(upstreamPort: Int, ignoreConditionalWrites: Boolean = false): FaultProxy =
    new FaultProxy(upstreamPort, ignoreConditionalWrites)

  private def errorResponse(f: Fault, key: String): Array[Byte] = {
    val (reason, code, message) = f match {
      case Conflict409 => ("Conflict", "ConditionalRequestConflict",
        "A conflicting conditional operation is currently in progress against this resource. Try again.")
      case _ => ("Slow Down", "SlowDown", "Please reduce your request rate.")
    }
    val body = s"""<?xml version="1.0" encoding="UTF-8"?>
                  |<Error><Code>$code</Code><Message>$message</Message><Key>$key</Key><RequestId>fault-proxy</RequestId></Error>""".stripMargin
    val bytes = body.getBytes(UTF_8)
    render(s"HTTP/1.1 ${f.status} $reason", Seq("Content-Type" -> "application/xml", "Content-Length" -> bytes.length.toString), bytes)
  }

  private def header(headers: Seq[(String, String)], name: String): Option[String] =
    headers.collectFirst { case (k, v) if k.equalsIgnoreCase(name) => v }

  private def without(headers: Seq[(String, String)], names: String*): Seq[(String, String)] =
    headers.filterNot(h => names.exists(_.equalsIgnoreCase(h._1)))

  private def isChunked(headers: Seq[(String, String)]): Boolean =
    header(headers, "Transfer-Encoding").exists(_.toLowerCase.contains("chunked"))

  /** A message as bytes (its framing headers are the caller's). */
  private def render(startLine: String, headers: Seq[(String, String)], body: Array[Byte]): Array[Byte] = {
    val b = new ByteArrayOutputStream()
    b.write((startLine + "\r\n" + headers.map { case (k, v) => s"$k: $v\r\n" }.mkString + "\r\n").getBytes(ISO_8859_1))
    b.write(body)
    b.toByteArray
  }

  /** A CRLF-terminated line without its CRLF; None at end of stream before any byte. */
  private def readLine(in: InputStream): Option[String] = {
    val b = new ByteArrayOutputStream()
    var c = in.read()
    if (c < 0) return None
    while (c >= 0 && c != '\n') { if (c != '\r') b.write(c); c = in.read() }
    if (c < 0) throw new EOFException("connection closed inside a line")
    Some(new String(b.toByteArray, ISO_8859_1))
  }

  /** The start line and headers of a message; None when the peer closed the connection between messages. */
  private def readHead(in: InputStream): Option[(String, Vector[(String, String)])] = readLine(in).map { start =>
    val headers = Iterator.continually(readLine(in).getOrElse(throw new EOFException("closed in headers")))
      .takeWhile(_.nonEmpty).map { l => val i = l.indexOf(':'); (l.take(i).trim, l.drop(i + 1).trim) }.toVector
    (start, headers)
  }

  /** The body as it was framed on the wire (chunked bodies keep their chunk lines and trailers). */
  private def readBody(in: InputStream, headers: Seq[(String, String)], noBody: Boolean, untilEof: Boolean): Array[Byte] = {
    def exactly(n: Int): Array[Byte] = {
      val bytes = in.readNBytes(n)
      if (bytes.length != n) throw new EOFException(s"body ended after ${bytes.length} of $n bytes")
      bytes
    }
    if (noBody) Array.emptyByteArray
    else if (isChunked(headers)) {
      val b = new ByteArrayOutputStream()
      def line(): String = { val l = readLine(in).getOrElse(throw new EOFException("closed in chunk")); b.write((l + "\r\n").getBytes(ISO_8859_1)); l }
      var size = Integer.parseInt(line().takeWhile(_ != ';').trim, 16)
      while (size > 0) { b.write(exactly(size)); line(); size = Integer.parseInt(line().takeWhile(_ != ';').trim, 16) }
      while (line().nonEmpty) {} // trailers, up to the empty line
      b.toByteArray
    } else header(headers, "Content-Length") match {
      case Some(n) => exactly(n.toInt)
      case None => if (untilEof) in.readAllBytes() else Array.emptyByteArray
    }
  }
}
