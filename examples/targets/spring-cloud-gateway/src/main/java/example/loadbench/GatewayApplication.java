/*
 * A Spring Cloud Gateway beside seed 003's Zuul: the same job (every request forwarded to one
 * backend) on WebFlux and reactor-netty instead of Zuul 1's thread per request on Tomcat. The
 * route is in application.properties; its URL (backend.url) comes from the command line, so
 * the scenario decides the port.
 */
package example.loadbench;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

@SpringBootApplication
public class GatewayApplication {

  public static void main(String[] args) {
    SpringApplication.run(GatewayApplication.class, args);
  }
}
